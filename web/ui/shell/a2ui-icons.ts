// The icons of the A2UI v0.8 standard catalog (Icon.name) as inline SVG:
// Google's Material Symbols (outlined, weight 400; Apache License 2.0), the
// symbols the catalog's names come from, bundled from
// @material-symbols/svg-400 (only these files). The catalog's off/filled
// pairs map to the outlined and filled symbol; payment and phone, which
// Material Symbols names otherwise, to credit_card and mobile.

import i_accountCircle from "@material-symbols/svg-400/outlined/account_circle.svg";
import i_add from "@material-symbols/svg-400/outlined/add.svg";
import i_arrowBack from "@material-symbols/svg-400/outlined/arrow_back.svg";
import i_arrowForward from "@material-symbols/svg-400/outlined/arrow_forward.svg";
import i_attachFile from "@material-symbols/svg-400/outlined/attach_file.svg";
import i_calendarToday from "@material-symbols/svg-400/outlined/calendar_today.svg";
import i_call from "@material-symbols/svg-400/outlined/call.svg";
import i_camera from "@material-symbols/svg-400/outlined/camera.svg";
import i_check from "@material-symbols/svg-400/outlined/check.svg";
import i_close from "@material-symbols/svg-400/outlined/close.svg";
import i_delete from "@material-symbols/svg-400/outlined/delete.svg";
import i_download from "@material-symbols/svg-400/outlined/download.svg";
import i_edit from "@material-symbols/svg-400/outlined/edit.svg";
import i_event from "@material-symbols/svg-400/outlined/event.svg";
import i_error from "@material-symbols/svg-400/outlined/error.svg";
import i_favorite from "@material-symbols/svg-400/outlined/favorite-fill.svg";
import i_favoriteOff from "@material-symbols/svg-400/outlined/favorite.svg";
import i_folder from "@material-symbols/svg-400/outlined/folder.svg";
import i_help from "@material-symbols/svg-400/outlined/help.svg";
import i_home from "@material-symbols/svg-400/outlined/home.svg";
import i_info from "@material-symbols/svg-400/outlined/info.svg";
import i_locationOn from "@material-symbols/svg-400/outlined/location_on.svg";
import i_lock from "@material-symbols/svg-400/outlined/lock.svg";
import i_lockOpen from "@material-symbols/svg-400/outlined/lock_open.svg";
import i_mail from "@material-symbols/svg-400/outlined/mail.svg";
import i_menu from "@material-symbols/svg-400/outlined/menu.svg";
import i_moreVert from "@material-symbols/svg-400/outlined/more_vert.svg";
import i_moreHoriz from "@material-symbols/svg-400/outlined/more_horiz.svg";
import i_notificationsOff from "@material-symbols/svg-400/outlined/notifications_off.svg";
import i_notifications from "@material-symbols/svg-400/outlined/notifications.svg";
import i_payment from "@material-symbols/svg-400/outlined/credit_card.svg";
import i_person from "@material-symbols/svg-400/outlined/person.svg";
import i_phone from "@material-symbols/svg-400/outlined/mobile.svg";
import i_photo from "@material-symbols/svg-400/outlined/photo.svg";
import i_print from "@material-symbols/svg-400/outlined/print.svg";
import i_refresh from "@material-symbols/svg-400/outlined/refresh.svg";
import i_search from "@material-symbols/svg-400/outlined/search.svg";
import i_send from "@material-symbols/svg-400/outlined/send.svg";
import i_settings from "@material-symbols/svg-400/outlined/settings.svg";
import i_share from "@material-symbols/svg-400/outlined/share.svg";
import i_shoppingCart from "@material-symbols/svg-400/outlined/shopping_cart.svg";
import i_star from "@material-symbols/svg-400/outlined/star-fill.svg";
import i_starHalf from "@material-symbols/svg-400/outlined/star_half.svg";
import i_starOff from "@material-symbols/svg-400/outlined/star.svg";
import i_upload from "@material-symbols/svg-400/outlined/upload.svg";
import i_visibility from "@material-symbols/svg-400/outlined/visibility.svg";
import i_visibilityOff from "@material-symbols/svg-400/outlined/visibility_off.svg";
import i_warning from "@material-symbols/svg-400/outlined/warning.svg";

/** Icon name (the catalog's enum) → SVG markup. */
export const icons: Record<string, string> = {
  accountCircle: i_accountCircle,
  add: i_add,
  arrowBack: i_arrowBack,
  arrowForward: i_arrowForward,
  attachFile: i_attachFile,
  calendarToday: i_calendarToday,
  call: i_call,
  camera: i_camera,
  check: i_check,
  close: i_close,
  delete: i_delete,
  download: i_download,
  edit: i_edit,
  event: i_event,
  error: i_error,
  favorite: i_favorite,
  favoriteOff: i_favoriteOff,
  folder: i_folder,
  help: i_help,
  home: i_home,
  info: i_info,
  locationOn: i_locationOn,
  lock: i_lock,
  lockOpen: i_lockOpen,
  mail: i_mail,
  menu: i_menu,
  moreVert: i_moreVert,
  moreHoriz: i_moreHoriz,
  notificationsOff: i_notificationsOff,
  notifications: i_notifications,
  payment: i_payment,
  person: i_person,
  phone: i_phone,
  photo: i_photo,
  print: i_print,
  refresh: i_refresh,
  search: i_search,
  send: i_send,
  settings: i_settings,
  share: i_share,
  shoppingCart: i_shoppingCart,
  star: i_star,
  starHalf: i_starHalf,
  starOff: i_starOff,
  upload: i_upload,
  visibility: i_visibility,
  visibilityOff: i_visibilityOff,
  warning: i_warning,
};
